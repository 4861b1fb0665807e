"""The command line: argparse -> RunConfig -> runner / sweep / reports."""
