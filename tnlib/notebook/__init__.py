"""What the notebooks call, one module per topic; the numbers they show are computed here, so that they are
tested (tests/notebook/test_<module>.py, the figures' in tests/notebook/test_figures.py) and reusable -- the cells
add at most a lookup or a line of arithmetic on them:

* ``figures``: every figure only the notebooks show, under one name, from the modules of their topics:
  ``notebook_plotting`` (the offline plotly set-up, the message and slider figures), ``density_figures``,
  ``explorer_controls`` (the explorer's widgets), ``classroom_figures`` and ``calibration_figures``;
* ``notebook_parameters``: the explorer's and the classroom notebook's parameter checks;
* ``explorer``: the Truncated Gaussian explorer's summary and presets;
* ``classroom_demos``: maximum likelihood, MSE as a Gaussian NLL, learned sigma, maximum entropy, closed and open
  lower bounds;
* ``distribution_properties``: the distribution's properties, sampling and estimation in textbook formulas;
* ``label_gaps``: how far the admissible bounds lie below h* in a tnlib dataset;
* ``synthetic_regression``: Gaussian and Truncated Gaussian heuristic models on synthetic states, over seeds;
* ``trained_distributions``: what the committed paper-scale NLM runs predict for real test states;
* ``seed_comparison``: how many seeds a claim needs, on the committed five-seed reports' per-seed values;
* ``exercise_checks``: the classroom exercises' answer checks, which say right or not yet without the answer;
* ``handout``: the students' copy of the classroom notebook, without the folded solutions;
* ``demo_tensors``: the float64 scalars and the single thread they all run on.
"""
