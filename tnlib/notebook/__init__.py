"""What the notebooks call: figure builders and the offline plotly set-up (figures), and the explorer's and the
classroom notebook's parameter checks and small computations (teaching)."""
