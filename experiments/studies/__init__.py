"""The studies, one file each (`experiments.reproduce` finds them): a figure or table of results/README.md, its runs
per preset, its table and figure. Adding a study is adding a file here that declares STUDIES (docs/experiments.md)."""
