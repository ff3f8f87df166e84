// The simulated device: see docs in SimulatedDevice's type comment once it lands.
