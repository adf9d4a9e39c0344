-- Nexmark q21: add channel id (CASE WHEN + REGEXP_EXTRACT on the bid's url)
-- streambed-operators: Calc#1 Sink#2
-- streambed-edges: source>Calc#1 Calc#1>Sink#2
CREATE TABLE nexmark_q21 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel VARCHAR,
  channel_id VARCHAR
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q21
SELECT
  auction, bidder, price, channel,
  CASE
    WHEN LOWER(channel) = 'apple' THEN '0'
    WHEN LOWER(channel) = 'google' THEN '1'
    WHEN LOWER(channel) = 'facebook' THEN '2'
    WHEN LOWER(channel) = 'baidu' THEN '3'
    ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
  END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL
  OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu');
