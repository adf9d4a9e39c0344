-- Nexmark q4: average price for a category (average winning bid of the auctions of each category)
-- streambed-operators: Calc#1 Calc#2 Join#3 Calc#4 GroupAggregate#5 Calc#6 GroupAggregate#7 Sink#8
-- streambed-edges: source>Calc#1 source>Calc#2 Calc#1>Join#3 Calc#2>Join#3 Join#3>Calc#4 Calc#4>GroupAggregate#5 GroupAggregate#5>Calc#6 Calc#6>GroupAggregate#7 GroupAggregate#7>Sink#8
-- Bids count while the auction is open: between its creation (processing time) and its expiry.
CREATE TABLE nexmark_q4 (
  id BIGINT,
  final BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q4
SELECT Q.category, AVG(Q.final)
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction
    AND CAST(B.`dateTime` AS TIMESTAMP(3)) BETWEEN CAST(A.`dateTime` AS TIMESTAMP(3)) AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
