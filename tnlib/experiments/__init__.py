"""Experiments: the files of a results folder (run_dir), sweeps over configurations (sweep), the paper's Table 1 and
Table 2 (tables), what a results folder can and cannot show (scope), the reports of a sweep (reports) and the main
job that regenerates reports/ (reproduce)."""
