-- Nexmark q5: hot items (auctions with the most bids in the last 10 s, every 2 s; legacy HOP window)
-- streambed-operators: Calc#1 GroupWindowAggregate#2 Calc#3 Calc#4 GroupAggregate#5 Calc#6 Join#7 Calc#8 Sink#9
-- streambed-edges: source>Calc#1 Calc#1>GroupWindowAggregate#2 GroupWindowAggregate#2>Calc#3 GroupWindowAggregate#2>Calc#4 Calc#4>GroupAggregate#5 GroupAggregate#5>Calc#6 Calc#3>Join#7 Calc#6>Join#7 Join#7>Calc#8 Calc#8>Sink#9
CREATE TABLE nexmark_q5 (
  auction BIGINT,
  num BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q5
SELECT AuctionBids.auction, AuctionBids.num
FROM (
  SELECT
    B1.auction,
    COUNT(*) AS num,
    HOP_START(B1.`dateTime`, INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS starttime,
    HOP_END(B1.`dateTime`, INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS endtime
  FROM bid B1
  GROUP BY B1.auction, HOP(B1.`dateTime`, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
) AS AuctionBids
JOIN (
  SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
  FROM (
    SELECT
      COUNT(*) AS num,
      HOP_START(B2.`dateTime`, INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS starttime,
      HOP_END(B2.`dateTime`, INTERVAL '2' SECOND, INTERVAL '10' SECOND) AS endtime
    FROM bid B2
    GROUP BY B2.auction, HOP(B2.`dateTime`, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
  ) AS CountBids
  GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime
  AND AuctionBids.endtime = MaxBids.endtime
  AND AuctionBids.num >= MaxBids.maxn;
