"""Domain types shared by the algorithms, the testbeds, the records and the reports (ARCHITECTURE.md,
"Domain words"). Nothing here measures, fits or decides: these are the values the layers pass on.

* :mod:`.query`: Query, Budget, Configuration and the rule every budget obeys (one slot per operator).
* :mod:`.measurement`: Measurement and OperatorMetrics (one observation window), SingleTaskMetrics
  (the configuration policies' input), Observation (a point of the explorer's data set).
* :mod:`.testbed`: TestbedInfo, what a testbed offers, and the checks of a budget against it.
* :mod:`.surrogate`: the fitted model f(M, P) and its features.
* :mod:`.plan`: Plan and PlanEntry, as plan.json holds them.
* :mod:`.keygroups`: Flink's key-group rule for keyed operators.
"""

from .measurement import (BUSYNESS_FLOOR, Measurement, Observation, OperatorMetrics, OperatorRates, SingleTaskMetrics,
                          queued_share)
from .plan import FAMILY_SPREAD_LIMIT, MAX_PLAN_SLOTS, Plan, PlanEntry, family_spread
from .query import SOURCE, Budget, Configuration, Query, check_slots, state_span
from .surrogate import FAMILIES, Features, Surrogate, check_family
from .testbed import TestbedInfo

__all__ = ["BUSYNESS_FLOOR", "FAMILIES", "FAMILY_SPREAD_LIMIT", "MAX_PLAN_SLOTS", "SOURCE", "Budget", "Configuration", "Features",
           "Measurement", "Observation", "OperatorMetrics", "OperatorRates", "Plan", "PlanEntry", "Query",
           "SingleTaskMetrics", "Surrogate", "TestbedInfo", "check_family", "check_slots", "family_spread", "queued_share",
           "state_span"]
