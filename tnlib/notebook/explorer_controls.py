"""The explorer's widgets: sliders, "infinite" checkboxes and a preset selector over the density figure, which
redraws once per change."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import plotly.graph_objects as go

from tnlib.notebook import explorer, notebook_parameters
from tnlib.notebook.density_figures import truncated_normal_figure
from tnlib.notebook.notebook_plotting import message_figure

def explorer_figure(
    loc: float,
    scale: float,
    low: float,
    high: float,
    observed: float,
    low_is_infinite: bool = False,
    high_is_infinite: bool = False,
) -> go.Figure:
    """The explorer's figure for the current widget values: ``-inf``/``inf`` replace the bounds whose
    checkbox is ticked; an invalid combination (e.g. low >= high) gives a message instead of an error."""
    lower = -math.inf if low_is_infinite else low
    upper = math.inf if high_is_infinite else high
    try:
        return truncated_normal_figure(loc, scale, lower, upper, observed)
    except ValueError as error:
        return message_figure(f"cannot draw: {error}")


class ExplorerControls:
    """The explorer's widgets.

    ``values`` maps :func:`explorer_figure`'s argument names to their widgets, ``output`` is where the figure
    goes, ``panel`` lays everything out with the preset selector. :meth:`on_change` registers the redraw
    callback; a preset changes several widgets but triggers a single redraw.
    """

    def __init__(self, values: dict[str, Any], preset: Any, output: Any, panel: Any) -> None:
        self.values, self.preset, self.output, self.panel = values, preset, output, panel
        self._callbacks: list[Callable[[], None]] = []
        self._applying_preset = False
        for control in values.values():
            control.observe(self._value_changed, names="value")
        preset.observe(self._apply_preset, names="value")

    def current_values(self) -> dict[str, Any]:
        """The widgets' values, as keyword arguments of :func:`explorer_figure`."""
        return {name: control.value for name, control in self.values.items()}

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after every user change."""
        self._callbacks.append(callback)

    def _notify(self) -> None:
        for callback in self._callbacks:
            callback()

    def _value_changed(self, change: dict) -> None:
        if not self._applying_preset:
            # The selector shows a preset only while the sliders hold it; back on "custom", choosing the same
            # preset again is a change the dropdown reports (it reports none for re-selecting its current value).
            self.preset.value = ()
            self._notify()

    def _apply_preset(self, change: dict) -> None:
        if not change["new"]:  # back on "custom": nothing to apply
            return
        low, high = change["new"]
        self._applying_preset = True
        try:
            self.values["loc"].value, self.values["scale"].value = 0.0, 1.0
            self.values["low_is_infinite"].value = not math.isfinite(low)
            self.values["high_is_infinite"].value = not math.isfinite(high)
            if math.isfinite(low):
                self.values["low"].value = low
            if math.isfinite(high):
                self.values["high"].value = high
        finally:
            self._applying_preset = False
        self._notify()


#: The sigma slider's range in decades (a log slider: 0.001 to 100 at one-hundredth of a decade per step), so that
#: sigma -> 0 and bounds many sigmas into a tail are reached by sliding, not only from the parameters cell.
SIGMA_SLIDER_DECADES = (-3.0, 2.0)

#: The label of the preset selector when the sliders hold values of no preset.
CUSTOM_PRESET = "(custom: move a slider or choose a preset)"


def explorer_controls(params: notebook_parameters.ExplorerParameters, slider_limit: float = 10.0) -> ExplorerControls:
    """Sliders for loc, scale, low, high and observed, "infinite" checkboxes for the bounds, a preset
    selector that sets the bounds (mu=0, sigma=1) from :data:`tnlib.notebook.explorer.PRESET_BOUNDS`, and an output
    area for the figure.

    l, u and x share one range, ``[-slider_limit, slider_limit]`` widened to hold their finite values; mu's slider
    spans that range widened to hold mu, so a starting point such as mu = -50 is shown as it is (a slider would
    silently clip it to its range) while l, u and x keep a range whose 0.05 steps a hand can set. sigma has a
    logarithmic slider over :data:`SIGMA_SLIDER_DECADES`, widened to the parameter's value.
    """
    import ipywidgets as widgets

    positions = [params.observed] + [bound for bound in (params.low, params.high) if math.isfinite(bound)]
    position_low, position_high = min([-slider_limit, *positions]), max([slider_limit, *positions])

    def slider(description: str, value: float, low: float = position_low,
               high: float = position_high) -> widgets.FloatSlider:
        return widgets.FloatSlider(value=value, min=low, max=high, step=0.05,
                                   description=description, continuous_update=False, readout_format=".2f")

    decades = math.log10(params.scale)
    values = {
        # mu's own range: a far mean (mu = -50) widens it alone, so l, u and x keep a range a hand can set
        "loc": slider("mu", params.loc, min(position_low, params.loc), max(position_high, params.loc)),
        "scale": widgets.FloatLogSlider(
            value=params.scale, base=10.0, min=min(SIGMA_SLIDER_DECADES[0], decades),
            max=max(SIGMA_SLIDER_DECADES[1], decades), step=0.01, description="sigma", continuous_update=False,
            readout_format=".3g"),
        "low": slider("low l", params.low if math.isfinite(params.low) else position_low),
        "high": slider("high u", params.high if math.isfinite(params.high) else position_high),
        "observed": slider("x = h*", params.observed),
        "low_is_infinite": widgets.Checkbox(value=not math.isfinite(params.low), description="l = -inf"),
        "high_is_infinite": widgets.Checkbox(value=not math.isfinite(params.high), description="u = +inf"),
    }
    options = [(CUSTOM_PRESET, ())] + [(label, (low, high)) for label, low, high in explorer.PRESET_BOUNDS]
    preset = widgets.Dropdown(options=options, value=(), description="preset",
                              layout=widgets.Layout(width="max-content"))
    output = widgets.Output()
    panel = widgets.VBox([
        preset,
        widgets.HBox([values["loc"], values["scale"], values["observed"]]),
        widgets.HBox([values["low"], values["low_is_infinite"]]),
        widgets.HBox([values["high"], values["high_is_infinite"]]),
        output,
    ])
    return ExplorerControls(values, preset, output, panel)


def show_explorer_controls(params: notebook_parameters.ExplorerParameters,
                           slider_limit: float = 10.0) -> ExplorerControls:
    """The explorer's interactive section in one call: display :func:`explorer_controls` and draw
    :func:`explorer_figure` for their values into their output area, again at every change."""
    from IPython.display import display

    from tnlib.notebook.notebook_plotting import show_in_output

    controls = explorer_controls(params, slider_limit)

    def redraw() -> None:
        show_in_output(controls.output, explorer_figure(**controls.current_values()))

    controls.on_change(redraw)
    redraw()
    display(controls.panel)
    return controls
