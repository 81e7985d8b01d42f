# source: A. Roy, H. Zeng, J. Bagga, G. Porter, A. C. Snoeren, "Inside the Social Network's (Datacenter) Network", ACM SIGCOMM 2015, Figure 6 (flow size distribution), Cache follower panel
# Points read by eye from the published figure (log-scale x axis), all destinations combined; accuracy about ±0.03 in probability.
# size_bytes cumulative_probability
100 0.02
500 0.10
1000 0.25
3000 0.45
10000 0.65
30000 0.80
100000 0.92
300000 0.98
1000000 1
