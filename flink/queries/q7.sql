-- Nexmark q7: highest bid (bids with the highest price of the last 10 s; legacy TUMBLE window + interval join)
-- streambed-operators: Calc#1 Calc#2 GroupWindowAggregate#3 Calc#4 IntervalJoin#5 Calc#6 Sink#7
-- streambed-edges: source>Calc#1 source>Calc#2 Calc#2>GroupWindowAggregate#3 GroupWindowAggregate#3>Calc#4 Calc#1>IntervalJoin#5 Calc#4>IntervalJoin#5 IntervalJoin#5>Calc#6 Calc#6>Sink#7
CREATE TABLE nexmark_q7 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q7
SELECT B.auction, B.bidder, B.price, B.`dateTime`, B.extra
FROM bid B
JOIN (
  SELECT MAX(B1.price) AS maxprice, TUMBLE_PROCTIME(B1.`dateTime`, INTERVAL '10' SECOND) AS `dateTime`
  FROM bid B1
  GROUP BY TUMBLE(B1.`dateTime`, INTERVAL '10' SECOND)
) B1
ON B.price = B1.maxprice
WHERE B.`dateTime` BETWEEN B1.`dateTime` - INTERVAL '10' SECOND AND B1.`dateTime`;
