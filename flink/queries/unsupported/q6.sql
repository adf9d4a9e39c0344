-- Nexmark q6: average selling price by seller (over its last 10 closed auctions)
-- Flink 2.3 rejects this query (kept for reference; see flink/README.md):
-- streambed-expected-error: Non-time attribute sort is not supported for bounded OVER window
CREATE TABLE nexmark_q6 (
  seller BIGINT,
  avg_price BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q6
SELECT
  Q.seller,
  AVG(Q.price) OVER (PARTITION BY Q.seller ORDER BY Q.`dateTime` ROWS BETWEEN 10 PRECEDING AND CURRENT ROW)
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY id, seller ORDER BY price DESC) AS rownum
  FROM (
    SELECT A.id, A.seller, B.price, B.`dateTime`
    FROM auction AS A, bid AS B
    WHERE A.id = B.auction
      AND CAST(B.`dateTime` AS TIMESTAMP(3)) BETWEEN CAST(A.`dateTime` AS TIMESTAMP(3)) AND A.expires
  )
) AS Q
WHERE Q.rownum <= 1;
