mod mock_binary;
mod mock_client;
mod mock_errors;
mod mock_faults;
mod mock_fixtures;
mod mock_routes;
mod mock_stream;
mod scripted;
