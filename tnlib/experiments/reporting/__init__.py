"""Experiments' reporting wing: results laid out; it runs nothing and never imports the running wing.

``report_files`` (the names of a report's files other code reads back), ``tables`` (Table 1 and Table 2, the
ablations), ``table_rows`` (the runs' metrics and planning summaries they lay out, one setting to a cell),
``table_cells`` (a cell in the paper's digits), ``folder_comparison`` (two results
folders side by side), ``paper_directions`` (where the paper's TN-vs-N directions hold), ``reports`` (the pages of a
results folder), ``report_figures`` (their figures: the training curves, the paired intervals), ``figure_html`` (a
figure as compact HTML), ``seed_statistics`` (per-seed values, paired intervals, the noise-aware bold rule),
``findings`` (every comparison a report rests on, with its interval and verdict), ``calibration_summary`` (the
calibration of learned-sigma runs, seeds pooled), ``report_gaps`` (what a results folder lacks and the command that
makes it), ``record_export`` (a results folder's records without weights, to commit) and ``render_check`` (do the
committed reports render again line for line).
"""
