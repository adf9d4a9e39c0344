"""Property-based fuzzing of the ``streambed`` command (tests/test_fuzz_generated.py, ``make fuzz``).

commands.py walks the CLI's parser, corpus.py makes valid files with the product itself,
strategies.py generates invocations and damaged files with Hypothesis, forkserver.py runs each
invocation in a forked child under resource limits, invariants.py judges what it printed.
"""
