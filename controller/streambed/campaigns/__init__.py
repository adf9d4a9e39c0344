"""Campaigns: the only place that assembles algorithms, a testbed, the ledger and the files a
campaign writes. Each is built from typed settings (settings.py) in two steps: the constructor
builds the testbed and refuses bad input before anything is written; ``run`` opens the ledger and
measures. Commands (commands/) parse options into settings and display results, nothing more.

* measure.py, estimate.py, optimize.py, explore.py, plan.py, validate.py: one campaign each.
* replan.py: planning from records without a testbed (fit, optimize --from-metrics, export).
* calibrate.py: the simulated testbed's profiles against the paper.
* chain.py: the estimator -> optimizer -> explorer chain, assembled once.
* testbeds.py: the testbed registry (name -> factory).
"""
