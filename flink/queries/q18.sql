-- Nexmark q18: find last bid (the last bid of each bidder on each auction; deduplication)
-- streambed-operators: Calc#1 Deduplicate#2 Calc#3 Sink#4
-- streambed-edges: source>Calc#1 Calc#1>Deduplicate#2 Deduplicate#2>Calc#3 Calc#3>Sink#4
CREATE TABLE nexmark_q18 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, `dateTime`, extra
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY `dateTime` DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 1;
