# StreamBed: every set-up step lives here; nothing is installed by hand.
#   make plan QUERY=q11     plan a query (sets everything up first)
#   make test               install what the tests need and run them all
#   make bench              speed and accuracy benchmarks (print numbers, assert nothing)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STREAMBED := $(VENV)/bin/streambed
# q11 by default: its per-event work (a session window per bidder) outweighs generating its events,
# so that on the local testbed its MST grows with slots; q1 and q2 are bound by the source (README).
QUERY ?= q11
RATE ?=
# flink: the local Flink testbed (inventories/local), deployed by Ansible; sim: the simulated testbed.
TESTBED ?= flink
CAMPAIGN_DIR ?= campaigns
# The platform (terraform/examples/$(ENV), inventories/$(ENV)): local is this machine.
ENV ?= local
# ENV=lab's Debian packages (below); defined here because prerequisites are expanded as rules are read.
LAB_PACKAGES := openssh-server sudo tini
LAB_PACKAGES_STAMP := $(VENV)/.lab-packages
FLINK_JOB_JAR := flink/build/streambed-job.jar
FLINK_JOB_SOURCES := $(shell find flink/src -type f 2>/dev/null)
FLINK_CONNECTORS := $(VENV)/flink-connectors

.PHONY: venv install plan validate stop test bench evaluate clean calibration datagen provision deploy destroy

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	# Apache Flink 2.3.0 from PyPI: the libraries carry the whole distribution (bin/, lib/, plugins/);
	# apache-flink itself without its PyFlink dependencies (apache-beam, pyarrow...): StreamBed uses the
	# package only to find the distribution and runs Flink's Java side (cluster, job jar), never PyFlink.
	$(PY) -m pip install --quiet apache-flink-libraries==2.3.0
	$(PY) -m pip install --quiet --no-deps apache-flink==2.3.0
	touch $@

venv install: $(VENV)/.installed

# A campaign with the same query and rate resumes (finished measurements come from its ledger);
# remove its directory under $(CAMPAIGN_DIR) for a fresh one. Without RATE: 10x the testbed's largest
# MST on the sim, 2x on the local Flink testbed (its 10 slots trust a log-shaped model only up to
# about 2.3x: docs/flink-testbed.md). On the local Flink testbed: the local timing profile (12-s
# observations over 3 windows) and the explorer's minimum of measurements (the corners, 2 with the
# inventory's one memory size, + 3), so that a plan takes about 15 minutes on 2 cores (PLAN_ARGS
# adds or overrides options).
PLAN_DIR = $(CAMPAIGN_DIR)/plan-$(QUERY)$(if $(RATE),-$(RATE))$(if $(filter sim,$(TESTBED)),-sim)
PLAN_FLINK_ARGS ?= --timing local --max-measurements 5 --rate-multiple 2
PLAN_ARGS ?=
plan: $(VENV)/.installed $(if $(filter flink,$(TESTBED)),$(FLINK_JOB_JAR))
	$(STREAMBED) plan --query $(QUERY) --testbed $(TESTBED) $(if $(RATE),--rate $(RATE)) --campaign-dir $(PLAN_DIR) \
		$(if $(filter flink,$(TESTBED)),$(PLAN_FLINK_ARGS) $(if $(filter-out local,$(ENV)),--inventory inventories/$(ENV))) $(PLAN_ARGS) \
		$(if $(wildcard $(PLAN_DIR)/ledger.sqlite),--resume)

# Production validation (paper VIII): the query's plan (make plan, same QUERY/RATE/TESTBED) at
# 100/120/150 % of its rate. TESTBED=sim: the sim at production scale, the paper's 5 min ramp and
# 30 min runs. TESTBED=flink: the production cluster of ENV (inventories/$(ENV)-production), where a
# plan larger than the cluster is refused with both sizes, or this machine's testbed for ENV=local,
# with short runs. ENV=local validates at the scale it holds, and the sim the most an unreachable
# plan supports (--within-cluster: the plan's campaign re-plans for the highest rate it serves there).
# VALIDATE_ARGS adds or overrides.
VALIDATE_DIR = $(CAMPAIGN_DIR)/validate-$(QUERY)$(if $(RATE),-$(RATE))$(if $(filter sim,$(TESTBED)),-sim,-$(ENV))
VALIDATE_INVENTORY = inventories/$(ENV)$(if $(filter local,$(ENV)),,-production)
VALIDATE_LOCAL_ARGS ?= --ramp 20 --duration 60 --window 10 --within-cluster
# ENV=lab proves the path, not the numbers (9 hosts on 2 shared cores): short runs, not re-planned.
VALIDATE_LAB_ARGS ?= --ramp 20 --duration 60 --window 10
VALIDATE_ARGS ?=
validate: $(VENV)/.installed $(if $(filter flink,$(TESTBED)),$(FLINK_JOB_JAR))
	$(STREAMBED) validate --query $(QUERY) --plan $(PLAN_DIR)/plan.json --testbed $(TESTBED) \
		--campaign-dir $(VALIDATE_DIR) \
		$(if $(filter flink,$(TESTBED)),--inventory $(VALIDATE_INVENTORY) $(if $(filter local,$(ENV)),$(VALIDATE_LOCAL_ARGS))$(if $(filter lab,$(ENV)),$(VALIDATE_LAB_ARGS)),--within-cluster) \
		$(VALIDATE_ARGS) $(if $(wildcard $(VALIDATE_DIR)/ledger.sqlite),--resume)

# The local testbed stays up between campaigns (no deployment wait for the next one); this stops
# its JobManager, TaskManagers and Prometheus (INVENTORY=<dir> for another inventory).
INVENTORY ?=
stop: $(VENV)/.installed
	$(STREAMBED) testbed stop $(if $(INVENTORY),--inventory $(INVENTORY))

# Nexmark data at rest, generated with Spark into the data lake (docs/data.md):
#   make datagen QUERY=q5 EVENTS=200000 [DATALAKE=<dir>] [SEED=0]
DATALAKE ?= datalake
EVENTS ?=
SEED ?= 0
datagen: $(VENV)/.installed
	$(if $(EVENTS),,$(error EVENTS is required: make datagen QUERY=q5 EVENTS=200000 [DATALAKE=<dir>]))
	$(STREAMBED) data generate --events $(EVENTS) --seed $(SEED) --query $(QUERY) --lake $(DATALAKE)

# Infrastructure (docs/infrastructure.md): ENV is a directory of terraform/examples and the inventory
# inventories/$(ENV) it renders. ENV=local provisions nothing and writes inventories/local.
#   make provision ENV=ec2 && make deploy ENV=ec2 ... make destroy ENV=ec2
# BACKEND_CONFIG=<file>: Terraform state in the backend a gitignored backend_override.tf declares
# (e.g. S3 with locking), configured from that file; unset: local state under .streambed/terraform/.
BACKEND_CONFIG ?=
export STREAMBED_TF_BACKEND_CONFIG := $(BACKEND_CONFIG)
provision: $(VENV)/.installed $(if $(filter lab,$(ENV)),$(LAB_PACKAGES_STAMP))
	$(STREAMBED) infra provision --env $(ENV)

deploy: $(VENV)/.installed $(FLINK_JOB_JAR)
	$(STREAMBED) infra deploy --env $(ENV)

destroy: $(VENV)/.installed
	$(STREAMBED) infra destroy --env $(ENV)

# make test: every test but those that stand up hosts, brokers or firewalls of their own (sshd, network
# namespaces, loop devices, nftables, a Kafka stand-in), which make test-cluster runs; CI runs both.
test: $(VENV)/.installed $(FLINK_JOB_JAR)
	$(PY) -m pytest -q -m "not cluster"

.PHONY: test-cluster
test-cluster: $(VENV)/.installed $(FLINK_JOB_JAR)
	$(PY) -m pytest -q -m cluster

# Debian packages the tests use besides what the roles install: chromium (the report page's browser
# test), openssh-server (fabric and Ansible over a real SSH, tests/test_nodes.py) and
# prometheus-node-exporter (the dashboards' host panel, tests/test_dashboards.py; the node_exporter
# role installs it on clusters), systemd (`systemd-analyze verify` of the roles' units,
# tests/test_ansible_supervision.py) and sudo (Ansible's become over SSH, tests/test_ansible_ssh.py).
# Installed once when missing (as root, else through sudo); the stamp makes the check one file test.
TEST_PACKAGES := chromium openssh-server prometheus-node-exporter systemd sudo
TEST_PACKAGES_STAMP := $(VENV)/.test-packages
AS_ROOT := $(if $(filter 0,$(shell id -u)),,sudo)
$(TEST_PACKAGES_STAMP): $(VENV)/.installed
	missing="$$(for p in $(TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done)"; \
	if [ -n "$$missing" ]; then $(AS_ROOT) apt-get update -qq && \
		$(AS_ROOT) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; fi
	touch $@
.PHONY: test-packages chromium
test-packages chromium: $(TEST_PACKAGES_STAMP)
test test-cluster: $(TEST_PACKAGES_STAMP)

# ENV=lab (docs/infrastructure.md): hosts as network namespaces on this machine, each with its own sshd
# (openssh-server), a PID 1 that reaps orphans (tini) and an admin user with passwordless sudo (sudo).
$(LAB_PACKAGES_STAMP): $(VENV)/.installed
	missing="$$(for p in $(LAB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done)"; \
	if [ -n "$$missing" ]; then $(AS_ROOT) apt-get update -qq && \
		$(AS_ROOT) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; fi
	touch $@
.PHONY: lab-packages
lab-packages: $(LAB_PACKAGES_STAMP)
test test-cluster: $(LAB_PACKAGES_STAMP)

calibration: $(VENV)/.installed
	$(STREAMBED) sim calibrate

evaluate: $(VENV)/.installed
	$(PY) bench/evaluate.py --out $(CAMPAIGN_DIR)/evaluate

bench: $(VENV)/.installed $(FLINK_JOB_JAR)
	$(PY) bench/sim_speed.py
	$(PY) bench/sim_agreement.py
	$(PY) bench/planner_speed.py
	$(PY) bench/estimator_accuracy.py
	$(PY) bench/stall_shortfall.py
	$(PY) bench/datagen_rate.py
	$(PY) bench/replay_rate.py
	$(PY) bench/kafka_load_rate.py
	-$(MAKE) --no-print-directory fuzz

# Property-based fuzzing of the command line (docs/robustness.md): FUZZ_EXAMPLES generated invocations of
# every command, from FUZZ_SEED (the same seed gives the same cases). Prints the summary; writes it to
# $(FUZZ_OUT)/summary.json and keeps each failing case's files with a repro.sh under $(FUZZ_OUT)/failures/.
FUZZ_EXAMPLES ?= 2000
FUZZ_SEED ?= 20261126
FUZZ_OUT ?= $(CAMPAIGN_DIR)/fuzz
.PHONY: fuzz
fuzz: $(VENV)/.installed
	PYTHONPATH=tests nice -n 5 $(PY) -m fuzz_support.run --examples $(FUZZ_EXAMPLES) --seed $(FUZZ_SEED) --out $(FUZZ_OUT)

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info controller/*.egg-info

# The Grafana dashboard from its panels in controller/streambed/report/dashboards.py (grafana/README.md).
.PHONY: dashboards
dashboards: $(VENV)/.installed
	$(PY) -m streambed.report.dashboards

# The Flink job (flink/): plain javac against the pinned Flink's lib/, rebuilt only when a source,
# a resource, the build script or the venv is newer than the jar.
.PHONY: flink-job
flink-job: $(VENV)/.installed $(FLINK_JOB_JAR)

$(FLINK_JOB_JAR): $(FLINK_JOB_SOURCES) flink/build.sh $(VENV)/.installed $(FLINK_CONNECTORS)/.installed
	flink/build.sh "$$($(PY) -c 'import os, pyflink; print(os.path.dirname(pyflink.__file__))')" $@ $(FLINK_CONNECTORS)/pyflink/lib

# Flink's Kafka connector 4.0.1-2.0 and kafka-clients 3.9.1, from PyPI (docs/data.md: checked against
# Flink 2.3). Installed beside the venv's packages, never into them: the wheel's other jars are
# Flink 2.0's and would shadow 2.3's in pyflink/lib. build.sh puts the two jars into the job jar.
$(FLINK_CONNECTORS)/.installed: $(VENV)/.installed
	$(PY) -m pip install --quiet --no-deps --upgrade --target $(FLINK_CONNECTORS) shigawire-apache-flink-libraries==2.0.0.post1
	touch $@
