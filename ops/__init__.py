"""Work steps without Dagster: self-play, train, distil, export, build, league, rate; and the `arena` CLI."""
