# source: A. Roy, H. Zeng, J. Bagga, G. Porter, A. C. Snoeren, "Inside the Social Network's (Datacenter) Network", ACM SIGCOMM 2015, Figure 6 (flow size distribution), Hadoop panel
# Points read by eye from the published figure (log-scale x axis), all destinations combined; accuracy about ±0.03 in probability.
# size_bytes cumulative_probability
100 0.10
300 0.40
1000 0.60
3000 0.70
10000 0.78
100000 0.86
1000000 0.94
10000000 1
