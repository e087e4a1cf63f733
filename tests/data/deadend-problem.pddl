(define (problem fragile-1)
  (:domain fragile)
  (:init (intact) (at-home))
  (:goal (and (delivered))))
