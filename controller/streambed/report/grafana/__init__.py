"""Grafana: the campaign dashboard generated from its panels (``dashboards``), and a campaign's phases
posted as annotations while it runs (``annotations``); grafana/README.md."""
