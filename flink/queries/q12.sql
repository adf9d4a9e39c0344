-- Nexmark q12: processing-time windows (bids per bidder per 10 s processing-time window; TUMBLE TVF)
-- streambed-operators: Calc#1 WindowAggregate#2 Sink#3
-- streambed-edges: source>Calc#1 Calc#1>WindowAggregate#2 WindowAggregate#2>Sink#3
CREATE TABLE nexmark_q12 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

CREATE VIEW B AS SELECT *, PROCTIME() AS p_time FROM bid;

INSERT INTO nexmark_q12
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
