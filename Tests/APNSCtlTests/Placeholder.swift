// filled by the apnsctl work
