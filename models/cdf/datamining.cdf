# source: A. Greenberg et al., "VL2: A Scalable and Flexible Data Center Network", ACM SIGCOMM 2009, Figure 2 (flow size CDF, data-mining cluster, by flow count)
# Points read by eye from the published figure (log-scale x axis); accuracy about ±0.03 in probability.
# size_bytes cumulative_probability
180 0.10
216 0.20
560 0.30
900 0.40
1100 0.50
1870 0.60
3160 0.70
10000 0.80
400000 0.90
3160000 0.95
100000000 0.98
1000000000 1
