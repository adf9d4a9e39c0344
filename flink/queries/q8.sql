-- Nexmark q8: monitor new users (people who created auctions in the last 10 s; legacy TUMBLE windows + join)
-- streambed-operators: Calc#1 GroupWindowAggregate#2 Calc#3 Calc#4 GroupWindowAggregate#5 Calc#6 Join#7 Calc#8 Sink#9
-- streambed-edges: source>Calc#1 Calc#1>GroupWindowAggregate#2 GroupWindowAggregate#2>Calc#3 source>Calc#4 Calc#4>GroupWindowAggregate#5 GroupWindowAggregate#5>Calc#6 Calc#3>Join#7 Calc#6>Join#7 Join#7>Calc#8 Calc#8>Sink#9
CREATE TABLE nexmark_q8 (
  id BIGINT,
  name VARCHAR,
  stime TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q8
SELECT P.id, P.name, P.starttime
FROM (
  SELECT P.id, P.name,
    TUMBLE_START(P.`dateTime`, INTERVAL '10' SECOND) AS starttime,
    TUMBLE_END(P.`dateTime`, INTERVAL '10' SECOND) AS endtime
  FROM person P
  GROUP BY P.id, P.name, TUMBLE(P.`dateTime`, INTERVAL '10' SECOND)
) P
JOIN (
  SELECT A.seller,
    TUMBLE_START(A.`dateTime`, INTERVAL '10' SECOND) AS starttime,
    TUMBLE_END(A.`dateTime`, INTERVAL '10' SECOND) AS endtime
  FROM auction A
  GROUP BY A.seller, TUMBLE(A.`dateTime`, INTERVAL '10' SECOND)
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
