# source: A. Roy, H. Zeng, J. Bagga, G. Porter, A. C. Snoeren, "Inside the Social Network's (Datacenter) Network", ACM SIGCOMM 2015, Figure 6 (flow size distribution), Web server panel
# Points read by eye from the published figure (log-scale x axis), all destinations combined; accuracy about ±0.03 in probability.
# size_bytes cumulative_probability
100 0.05
300 0.20
1000 0.45
2000 0.60
5000 0.75
10000 0.85
30000 0.93
100000 0.97
300000 0.99
1000000 1
