-- Nexmark q10: log to file system (bids with day / hour-minute partition columns; here into a blackhole)
-- streambed-operators: Calc#1 Calc#2 Sink#3
-- streambed-edges: source>Calc#1 Calc#1>Calc#2 Calc#2>Sink#3
CREATE TABLE nexmark_q10 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR,
  dt STRING,
  hm STRING
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q10
SELECT auction, bidder, price, `dateTime`, extra,
  DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), DATE_FORMAT(`dateTime`, 'HH:mm')
FROM bid;
