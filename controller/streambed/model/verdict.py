"""The verdicts of validation at production scale (paper section VIII), as plans, reports and records name them."""

SUSTAINED = "sustained"
UNSTABLE = "unstable"
NOT_SUSTAINED = "not sustained"
SOURCE_LIMITED = "source-limited"
"""A run the testbed's own source could not feed: it says nothing about the plan."""

UNDER = "under-provisioned"
OVER = "over-provisioned"
RIGHT = "right"
INCONCLUSIVE = "inconclusive (source-limited)"
NO_BASE = "inconclusive (no 100 % run)"

DRAINS = "drains within T"
"""The catch-up run: pending records fell to the tolerance for good no later than T after the start."""
DOES_NOT_DRAIN = "does not drain within T"
