//! Running a plan: engine, live view, signals, aggregation, output.
