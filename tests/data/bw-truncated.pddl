(define (problem bw-truncated)
  (:domain blocksworld-4ops)
  (:objects a b)
  (:init (arm-empty) (on-table a)
