-- Nexmark q3: local item suggestion (sellers in OR, ID or CA of category-10 auctions; regular join)
-- streambed-operators: Calc#1 Calc#2 Join#3 Calc#4 Sink#5
-- streambed-edges: source>Calc#1 source>Calc#2 Calc#1>Join#3 Calc#2>Join#3 Join#3>Calc#4 Calc#4>Sink#5
CREATE TABLE nexmark_q3 (
  name VARCHAR,
  city VARCHAR,
  state VARCHAR,
  id BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q3
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');
