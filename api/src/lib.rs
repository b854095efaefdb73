//! Sveltos API types: EventSource, EventTrigger, EventReport, SveltosCluster, ClusterProfile.
