mod registry;
