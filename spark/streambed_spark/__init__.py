"""StreamBed's PySpark jobs: Nexmark data at rest (nexmark, lake), its load into Kafka (kafka_load) and
campaign analytics (analytics). Each job is a module with a ``main`` runnable with ``spark-submit``
and functions that take a SparkSession, so that tests share one session.
"""
