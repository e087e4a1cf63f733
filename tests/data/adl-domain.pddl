(define (domain needs-adl)
  (:requirements :strips :conditional-effects)
  (:predicates (p) (q))
  (:action a
    :parameters ()
    :precondition (and (p))
    :effect (and (q))))
