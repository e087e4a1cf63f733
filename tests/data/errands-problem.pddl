(define (problem errands-1)
  (:domain errands)
  (:init (at-home))
  (:goal (and (bought))))
