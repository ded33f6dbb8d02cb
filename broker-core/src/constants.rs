//! Every limit and default of the broker, in one place, units last, each with the reason for
//! its value. Kafka's name for the setting is given where one exists.
