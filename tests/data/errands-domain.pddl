; `whistle` achieves nothing the goal needs: pyperplan's relevance analysis drops it from the grounding
(define (domain errands)
  (:requirements :strips)
  (:predicates (at-home) (at-shop) (bought) (whistled))
  (:action walk
    :parameters ()
    :precondition (and (at-home))
    :effect (and (at-shop) (not (at-home))))
  (:action buy
    :parameters ()
    :precondition (and (at-shop))
    :effect (and (bought)))
  (:action whistle
    :parameters ()
    :precondition (and (at-home))
    :effect (and (whistled))))
