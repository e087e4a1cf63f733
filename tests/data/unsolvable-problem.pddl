; the vase starts broken: the goal is unreachable even in the delete relaxation
(define (problem fragile-broken)
  (:domain fragile)
  (:init (at-home))
  (:goal (and (delivered))))
