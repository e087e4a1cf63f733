; three blocks: a on b, c on the table; goal: a tower c-b-a
(define (problem bw-3)
  (:domain blocksworld-4ops)
  (:objects a b c)
  (:init (arm-empty) (on a b) (on-table b) (on-table c) (clear a) (clear c))
  (:goal (and (on a b) (on b c))))
