module spanperf

go 1.19
