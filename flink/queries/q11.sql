-- Nexmark q11: user sessions (bids per bidder per session, 10 s gap; legacy SESSION window)
-- streambed-operators: Calc#1 GroupWindowAggregate#2 Calc#3 Sink#4
-- streambed-edges: source>Calc#1 Calc#1>GroupWindowAggregate#2 GroupWindowAggregate#2>Calc#3 Calc#3>Sink#4
CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q11
SELECT
  B.bidder,
  COUNT(*) AS bid_count,
  SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) AS starttime,
  SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);
