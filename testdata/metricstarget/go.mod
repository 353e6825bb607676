module metricstarget

go 1.18
