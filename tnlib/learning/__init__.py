"""Learning heuristics: model inputs (encodings), the models (NLM, STRIPS-HGN, linear regression), the N / TN
distribution head, training, test metrics (evaluation), planning with a trained model (learned_heuristic), planning a split instance by instance
(split_planning) and the names of the files they write (run_files)."""
