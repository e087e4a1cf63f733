; a vase that must be delivered intact: dropping it is irreversible, so `drop` leads to a dead end
(define (domain fragile)
  (:requirements :strips)
  (:predicates (intact) (at-home) (at-shop) (delivered))
  (:action walk
    :parameters ()
    :precondition (and (at-home))
    :effect (and (at-shop) (not (at-home))))
  (:action drop
    :parameters ()
    :precondition (and (intact))
    :effect (and (not (intact))))
  (:action deliver
    :parameters ()
    :precondition (and (intact) (at-shop))
    :effect (and (delivered))))
