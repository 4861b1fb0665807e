"""Stage 5: tables, plots, published numbers, comparisons and the HTML report from run folders."""
