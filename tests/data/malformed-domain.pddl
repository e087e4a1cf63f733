(define (domain broken)
  (:requirements :strips)
  (:predicates (p) (q))
  (:action a
    :parameters ()
    :precondition (and (p)
    :effect (and (q)))
