"""Classical planning: PDDL tasks compiled to arrays, the paper's domains and instance generators, symbolic
heuristics, search, plan files and validation, and optimal plans from Fast Downward.

========================  ==========================================================================
module                    what
========================  ==========================================================================
``pddl``                  PDDL files read with pyperplan's parser, one error line for a bad file
``task``                  a task grounded to packed bit-states and index arrays
``domains/``              the paper's four domain files
``generators``            random instances distributed like the IPC generators'
``heuristics``            blind, goal count, h_max, h_add, h_FF, LM-cut, the linear model's features
``relaxation_kernels``    the heuristics' numba kernels on packed states (pyperplan's order, LM-cut)
``search``                GBFS, A*, breadth-first search, random-walk states
``search_settings``       what GBFS is asked besides its heuristic: counting protocol and limits
``plans``                 IPC plan files, simulation and validation
``fast_downward``         optimal plans with Fast Downward A* + LM-cut
``optimal_costs``         exact h* and optimal plans: gripper and ferry by closed forms, visitall by search
``blocksworld_optimal``   exact h* and optimal plans of blocksworld, by search (``optimal_costs`` serves them)
========================  ==========================================================================
"""
