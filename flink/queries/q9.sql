-- Nexmark q9: winning bids (the highest bid of each auction while it is open; join + Top-1)
-- streambed-operators: Calc#1 Calc#2 Join#3 Calc#4 Rank#5 Calc#6 Sink#7
-- streambed-edges: source>Calc#1 source>Calc#2 Calc#1>Join#3 Calc#2>Join#3 Join#3>Calc#4 Calc#4>Rank#5 Rank#5>Calc#6 Calc#6>Sink#7
CREATE TABLE nexmark_q9 (
  id BIGINT,
  itemName VARCHAR,
  description VARCHAR,
  initialBid BIGINT,
  reserve BIGINT,
  `dateTime` TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  extra VARCHAR,
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  bid_dateTime TIMESTAMP(3),
  bid_extra VARCHAR
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q9
SELECT
  id, itemName, description, initialBid, reserve, `dateTime`, expires, seller, category, extra,
  auction, bidder, price, bid_dateTime, bid_extra
FROM (
  SELECT A.id, A.itemName, A.description, A.initialBid, A.reserve,
    CAST(A.`dateTime` AS TIMESTAMP(3)) AS `dateTime`, A.expires, A.seller, A.category, A.extra,
    B.auction, B.bidder, B.price, CAST(B.`dateTime` AS TIMESTAMP(3)) AS bid_dateTime, B.extra AS bid_extra,
    ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.`dateTime` ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction
    AND CAST(B.`dateTime` AS TIMESTAMP(3)) BETWEEN CAST(A.`dateTime` AS TIMESTAMP(3)) AND A.expires
)
WHERE rownum <= 1;
