-- Nexmark q0: pass through (measures the cost of reading, projecting and writing bids)
-- streambed-operators: Calc#1 Sink#2
-- streambed-edges: source>Calc#1 Calc#1>Sink#2
CREATE TABLE nexmark_q0 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q0
SELECT auction, bidder, price, `dateTime`, extra FROM bid;
