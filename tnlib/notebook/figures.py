"""Every figure only the notebooks show, under the one name they call it by (``figures.truncated_normal_figure(...)``),
and the notebook plotting set-up: the notebooks only choose parameters and call ``.show()``. Each figure is built in
the module of its topic and returned as a ``plotly.graph_objects.Figure`` (tested in
``tests/notebook/test_figures.py``). The figures a report page embeds as well -- the training curves, the paired
intervals -- are drawn in :mod:`tnlib.experiments.reporting.report_figures`, which the experiments notebook imports
itself: ``tnlib report`` draws them without this front end, which no library stage imports. Those are the figures' two
homes (``tests/repository/test_layering.py`` checks that no other module builds one):

* :mod:`tnlib.notebook.notebook_plotting`: the offline renderer, the colours, the message and the slider figures;
* :mod:`tnlib.notebook.density_figures`: the Normal and Truncated Normal densities, their view and stepped slider;
* :mod:`tnlib.notebook.explorer_controls`: the explorer's widgets and the figure they draw;
* :mod:`tnlib.notebook.classroom_figures`: the classroom notebook's curves, regressions, densities and seeds;
* :mod:`tnlib.notebook.calibration_figures`: the PIT histograms of the classroom's and a sweep's models.
"""
from __future__ import annotations

from tnlib.notebook.notebook_plotting import (
    INLINE_RENDERER, BUNDLE_MARKER, setup_notebook_plotting, show_in_output, message_figure, slider_figure,
)
from tnlib.notebook.density_figures import (
    NORMAL_PDF, TRUNCATED_PDF, LOC_LINE, MEAN_LINE, MODE_MARKER, OBSERVED_LINE, BULK_TAIL_PROBABILITY,
    MAX_VIEW_TO_BULK, DRAWABLE_RELATIVE_WIDTH, density_view, density_grid, truncated_density, distinct_formats,
    truncated_normal_figure, preset_bounds_figure, STEPPED_NUM_POINTS, stepped_truncated_normal_figure,
)
from tnlib.notebook.explorer_controls import (
    explorer_figure, ExplorerControls, SIGMA_SLIDER_DECADES, CUSTOM_PRESET, explorer_controls, show_explorer_controls,
)
from tnlib.notebook.classroom_figures import (
    curves_figure, bar_figure, sample_histogram_figure, bound_nll_figure, open_bound_slider_figure,
    REFERENCE_LABELS, regression_loss_figure, point_estimate_figure, prediction_scatter_figure,
    TRAINED_DENSITY_FLOOR, trained_distributions_figure, label_gap_figure, seed_pairs_figure, fixed_scale_figure,
    holm_step_down_figure, convergence_ratio_figure,
)
from tnlib.notebook.calibration_figures import (
    PIT_BINS, PIT_LABELS, pit_histograms_figure, calibration_figure, sweep_calibration_figures,
)

__all__ = [
    "INLINE_RENDERER", "BUNDLE_MARKER", "setup_notebook_plotting", "show_in_output", "message_figure",
    "slider_figure", "NORMAL_PDF", "TRUNCATED_PDF", "LOC_LINE", "MEAN_LINE", "MODE_MARKER", "OBSERVED_LINE",
    "BULK_TAIL_PROBABILITY", "MAX_VIEW_TO_BULK", "DRAWABLE_RELATIVE_WIDTH", "density_view", "density_grid",
    "truncated_density", "distinct_formats", "truncated_normal_figure", "preset_bounds_figure",
    "STEPPED_NUM_POINTS", "stepped_truncated_normal_figure", "explorer_figure", "ExplorerControls",
    "SIGMA_SLIDER_DECADES", "CUSTOM_PRESET", "explorer_controls", "show_explorer_controls", "curves_figure", "bar_figure",
    "sample_histogram_figure", "bound_nll_figure", "open_bound_slider_figure", "REFERENCE_LABELS",
    "regression_loss_figure", "point_estimate_figure", "prediction_scatter_figure", "TRAINED_DENSITY_FLOOR",
    "trained_distributions_figure", "label_gap_figure", "seed_pairs_figure", "fixed_scale_figure",
    "holm_step_down_figure", "convergence_ratio_figure", "PIT_BINS",
    "PIT_LABELS", "pit_histograms_figure", "calibration_figure", "sweep_calibration_figures",
]
