-- Record contract v3: the windows besides the congestion window that can hold a TCP flow
-- (iperf3): the largest receive window the receiver advertised (max_snd_wnd, summed over the
-- streams) and the sending socket's buffer per stream as the run began (sndbuf_actual, forward
-- runs). NULL when the tool did not say (older iperf3, pscheduler) or for rows stored before v3.

ALTER TABLE throughput ADD COLUMN IF NOT EXISTS receive_window_bytes bigint;
ALTER TABLE throughput ADD COLUMN IF NOT EXISTS send_buffer_bytes bigint;
