# source: M. Alizadeh et al., "Data Center TCP (DCTCP)", ACM SIGCOMM 2010, Figure 4 (distribution of flow sizes, web-search cluster, all flows weighted by count)
# Points read by eye from the published figure (log-scale x axis); accuracy about ±0.03 in probability.
# size_bytes cumulative_probability
6000 0.15
13000 0.20
19000 0.30
33000 0.40
53000 0.53
133000 0.60
667000 0.70
1333000 0.80
3333000 0.90
6667000 0.97
20000000 1
