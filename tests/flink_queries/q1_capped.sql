-- Nexmark q1 whose Calc has a known capacity: streambed_cap lets 50,000 bids/s through per task.
-- Bids are 46 of every 50 events, so one Calc task caps the source at 54,348 events/s: a rate
-- that a 2-core machine with one core busy elsewhere still generates and projects with room to spare.
-- streambed-operators: Calc#1 Sink#2
-- streambed-edges: source>Calc#1 Calc#1>Sink#2
CREATE TABLE nexmark_q1_capped (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  `dateTime` TIMESTAMP(3),
  extra VARCHAR
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q1_capped
SELECT streambed_cap(auction, 5E4) AS auction, bidder, 0.908 * price AS price, `dateTime`, extra FROM bid;
