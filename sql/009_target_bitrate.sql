-- Record contract v2: the rate a throughput test asked for (iperf3 -b, pscheduler's bandwidth).
-- A run at that rate was paced by the tester, not by the network; NULL when the test asked for
-- none (TCP as fast as it goes), did not say, or was stored under contract v1.

ALTER TABLE throughput ADD COLUMN IF NOT EXISTS target_bitrate_bps double precision;
