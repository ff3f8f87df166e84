// filled by the crypto work
