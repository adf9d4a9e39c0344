-- Nexmark q19: auction top-10 price (the 10 highest bids of each auction; Top-N)
-- streambed-operators: Calc#1 Rank#2 Calc#3 Sink#4
-- streambed-edges: source>Calc#1 Calc#1>Rank#2 Rank#2>Calc#3 Calc#3>Sink#4
CREATE TABLE nexmark_q19 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  url VARCHAR,
  `dateTime` TIMESTAMP(3),
  extra VARCHAR,
  rank_number BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q19
SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number FROM bid
)
WHERE rank_number <= 10;
